# .to/.float return the same tensor when nothing changes; otherwise a copy
import torch

a = torch.tensor([1.0, 2.0], requires_grad=True)
same = a.float()
also_same = a.to(torch.float32)
dbl = a.double()
as_int = a.detach().int()
lng = torch.tensor([1, 2]).long()
back = dbl.to(a.dtype)
print(same is a, dbl.grad_fn, as_int.dtype)
dbl.sum().backward()
