# Tensor hooks: a lambda that prints the incoming gradient, and one that scales it
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * 2
h = y.register_hook(lambda g: print("grad of y:", g))
x.register_hook(lambda g: g * 10)
z = y.sum()
z.backward()
print(x.grad)
