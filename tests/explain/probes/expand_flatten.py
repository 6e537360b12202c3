# why a reshape had to copy: expand (stride 0) versus transpose
a = torch.arange(3.0)
e = a.expand(2, 3)
# plain: assert e.stride() == (0, 1) and e.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
f = e.flatten()
# plain: assert f.untyped_storage().data_ptr() != a.untyped_storage().data_ptr() and f.tolist() == [0, 1, 2, 0, 1, 2]
t = torch.arange(6.0).reshape(2, 3).t()
g = t.flatten()
# plain: assert g.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
s = torch.arange(6.0).reshape(2, 3)[:, :2]
k = s.reshape(-1)
# plain: assert not s.is_contiguous() and k.untyped_storage().data_ptr() != s.untyped_storage().data_ptr()
