# id(): which operations return the same tensor object and which a new one
import torch

a = torch.ones(3, requires_grad=True)
b = a.detach()
c = a.requires_grad_()
d = a.data
print("detach same object:", id(a) == id(b))
print("requires_grad_ same object:", id(a) == id(c))
print(".data same object:", id(d) == id(a))
ids = [id(t) for t in (a, b, c, d)]
print(len(set(ids)), ids[0] == ids[2])
print(isinstance(id(a), int))
