# backward() on a non-scalar needs a gradient argument
# expect-error: RuntimeError
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
y.backward(torch.tensor([1.0, 0.5]))
print(x.grad)
y2 = x * 3
y2.backward()
