# even and odd elements of one array lie in the same buffer but share no element
import torch

t = torch.arange(6.0)
arr = t.numpy()
evens = arr.reshape(3, 2).T[0]
odds = arr.reshape(3, 2).T[1]
evens[0] = 100.0
print(odds, t)
