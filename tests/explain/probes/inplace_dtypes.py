# what an in-place write does to the dtype: it keeps the target's, or refuses
h = torch.ones(2, dtype=torch.float16)
x64 = torch.full((2,), 1.0001, dtype=torch.float64)
h += x64
# plain: assert h.dtype == torch.float16 and h.tolist() == [2.0, 2.0]
i = torch.zeros(3, dtype=torch.int64)
i.copy_(torch.tensor([1.7, -2.5, 3.2]))
# plain: assert i.tolist() == [1, -2, 3]
u = torch.tensor([250], dtype=torch.uint8)
u += 10
# plain: assert u.tolist() == [4]
j = torch.ones(2, dtype=torch.int64)
j += torch.tensor([0.5, 0.5])  # expect: RuntimeError
