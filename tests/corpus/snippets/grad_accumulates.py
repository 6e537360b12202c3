# Forgot zero_grad: .grad accumulates across backward calls, torch.autograd.grad does not
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
x = torch.tensor([3.0, 4.0])
for i in range(3):
    loss = (w * x).sum()
    loss.backward()
    print(i, w.grad.tolist())
(g,) = torch.autograd.grad((w * x).sum(), w)
grads = torch.autograd.grad((w * w).sum(), [w])
print(g, grads[0], w.grad)
w.grad.zero_()
print(w.grad)
