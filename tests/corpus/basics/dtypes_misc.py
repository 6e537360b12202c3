# other dtypes: complex, bool, float16, bfloat16, float64 and default dtype
import torch

c = torch.tensor([1 + 2j, -0.5j])
cc = c * c.conj()
b = torch.tensor([True, False, True])
nb = b.sum()
h = torch.tensor([1.1, 2.2], dtype=torch.float16)
bf = torch.tensor([1.1, 2.2], dtype=torch.bfloat16)
d = torch.tensor([0.1, 0.2], dtype=torch.float64)
up = h.float() + d
torch.set_default_dtype(torch.float64)
f64 = torch.tensor([0.5])
torch.set_default_dtype(torch.float32)
f32 = torch.tensor([0.5])
print(c, b, h, bf, up.dtype, f64.dtype, f32.dtype)
