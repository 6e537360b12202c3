# augmented assignment through subscripts and attributes, chained assignment
import torch

a = b = torch.zeros(3)
a[0] += 5
a[1:] -= 1
print(b, b._version)
w = torch.ones(2, requires_grad=True)
(w * 3).sum().backward()
w.grad *= 2
lst = [torch.ones(1), torch.ones(1)]
lst[0] += 1
lst[1] = lst[1] + 1
d = {"k": torch.ones(2)}
d["k"] *= 4
print(w.grad, lst, d)
