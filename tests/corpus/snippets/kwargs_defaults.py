# Loss helper with keyword defaults: reduction="sum" vs "mean" changes the gradient scale
import torch
import torch.nn.functional as F


def mse(pred, target, reduction="mean", scale=1.0):
    return scale * F.mse_loss(pred, target, reduction=reduction)


def grad_of(w, loss_value):
    (g,) = torch.autograd.grad(loss_value, w)
    return g


w = torch.tensor([0.5, -0.5], requires_grad=True)
x = torch.tensor([1.0, 2.0])
t = torch.tensor([1.0, 1.0])
g_mean = grad_of(w, mse(w * x, t))
g_sum = grad_of(w, mse(w * x, t, reduction="sum"))
g_scaled = grad_of(w, mse(pred=w * x, target=t, scale=0.5))
print(g_mean, g_sum, g_scaled)
print(w.grad)
