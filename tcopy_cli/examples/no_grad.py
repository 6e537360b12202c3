# torch.no_grad(): results without history
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)

# Inside no_grad, operations record nothing: y has no grad_fn.
with torch.no_grad():
    y = w * 2

# Outside, the same operation is tracked.
z = w * 2

# An in-place update of a leaf is allowed under no_grad (what optimizers do).
with torch.no_grad():
    w -= 0.1 * z
