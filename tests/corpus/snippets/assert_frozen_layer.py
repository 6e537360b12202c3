# Why is my first layer's gradient None? It was frozen with requires_grad_(False)
# expect-error: AssertionError
import torch
import torch.nn as nn

torch.manual_seed(0)
frozen = nn.Linear(3, 4).requires_grad_(False)
head = nn.Linear(4, 2)
x = torch.randn(5, 3)
out = head(frozen(x))
assert out.shape == (5, 2)
loss = out.pow(2).mean()
loss.backward()
assert head.weight.grad is not None
print(head.weight.grad.shape, frozen.weight.requires_grad)
assert frozen.weight.grad is not None, "frozen layer got no gradient"
print("unreachable")
