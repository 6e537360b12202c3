# backward(gradient) on a non-scalar weights the output gradient
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * x
g = torch.tensor([1.0, 0.1, 0.01])
y.backward(g)
print(x.grad)
leaf = torch.zeros(2, requires_grad=True)
seed = torch.tensor([5.0, 6.0])
leaf.backward(seed)
print(leaf.grad)
