# with torch.no_grad(): results are not tracked, in-place updates of leaves are allowed
import torch

w = torch.tensor([1.0, -1.0], requires_grad=True)
with torch.no_grad():
    y = w * 2
    w.add_(1)
    inside = torch.is_grad_enabled()
print(y.requires_grad, y.grad_fn, inside, torch.is_grad_enabled())
z = w * 2
with torch.no_grad(), torch.enable_grad():
    q = w * 3
with torch.set_grad_enabled(False):
    r = w + 1
