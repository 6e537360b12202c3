# views and slices share storage; reshape of a non-contiguous tensor copies
import torch

base = torch.arange(6.0)
v = base.view(2, 3)
tail = base[1:]
tt = v.t()
tr = v.transpose(0, 1)
r1 = v.reshape(3, 2)
r2 = tt.reshape(6)
print(tt.is_contiguous(), r2.data_ptr() == base.data_ptr())
tail[0] = 100.0
print(v)
col = v[:, 1]
col.mul_(-1)
print(base, base._version, tail._version)
step2 = base[::2]
