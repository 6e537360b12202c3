# gradients accumulate over repeated backward calls in a loop
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
x = torch.tensor([3.0, 4.0])
for i in range(3):
    loss = (w * x).sum() * (i + 1)
    loss.backward()
    print(i, w.grad)
total = i
