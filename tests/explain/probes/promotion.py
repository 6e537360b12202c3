# type promotion: the result dtype of mixed operations
i = torch.tensor([3, 4])
f = i * 0.5
# plain: assert f.dtype == torch.float32
q = i / 2
# plain: assert q.dtype == torch.float32 and q.tolist() == [1.5, 2.0]
fd = i // 2
# plain: assert fd.dtype == torch.int64
h = torch.ones(2, dtype=torch.float16) + torch.ones(2, dtype=torch.float64)
# plain: assert h.dtype == torch.float64
s = torch.ones(2, dtype=torch.float16) + 1.5
# plain: assert s.dtype == torch.float16
