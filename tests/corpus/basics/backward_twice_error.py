# a second backward through a freed graph raises RuntimeError
# expect-error: RuntimeError
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
y.backward()
print(x.grad)
y.backward()
print("not reached")
