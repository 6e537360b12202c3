# writing through .data into a saved tensor gives silently wrong gradients
import torch

x = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
y = x.exp()
y.data.zero_()
loss = y.sum()
loss.backward()
print(x.grad)
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
s = (w * w).sum()
w.data.mul_(100)
s.backward()
print(w.grad, w._version)
