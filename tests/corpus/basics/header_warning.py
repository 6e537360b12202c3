# a warning raised while evaluating an if test (reading .grad of a non-leaf)
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
y.sum().backward()
if y.grad is None:
    print("y has no grad: it is not a leaf")
