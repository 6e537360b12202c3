# Gradient penalty: torch.autograd.grad with create_graph=True, then backward through it
import torch
import torch.nn as nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
x = torch.randn(3, 2, requires_grad=True)
score = critic(x).sum()
(gx,) = torch.autograd.grad(score, x, create_graph=True)
penalty = ((gx.norm(dim=1) - 1) ** 2).mean()
penalty.backward()
print(gx.requires_grad, gx.grad_fn is not None)
print(x.grad is None, critic[0].weight.grad.shape)
