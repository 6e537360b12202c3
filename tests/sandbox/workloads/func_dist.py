import torch
import torch.distributions as D
from torch.func import grad, jacrev, vmap


def f(x):
    return (x.sin() ** 2).sum()


x = torch.randn(5)
print(grad(f)(x))
print(jacrev(torch.sin)(x).shape)
print(vmap(torch.dot)(torch.randn(4, 3), torch.randn(4, 3)))
n = D.Normal(torch.zeros(3), torch.ones(3))
s = n.rsample((10,))
print(n.log_prob(s).sum(), D.Categorical(logits=torch.randn(4)).sample())
print(D.kl_divergence(n, D.Normal(torch.ones(3), torch.ones(3))))
torch.autograd.set_detect_anomaly(True)
y = torch.randn(3, requires_grad=True)
(y * 2).sum().backward()
print(y.grad)
