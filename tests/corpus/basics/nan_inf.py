# non-finite values: nan, inf and -inf
import torch

z = torch.tensor([0.0, 1.0, -1.0])
q = z / 0
lg = torch.log(z)
x = torch.tensor([0.0, 4.0], requires_grad=True)
y = x.sqrt()
y.sum().backward()
clean = torch.nan_to_num(q)
print(q, lg, x.grad)
