# Gradients accumulate over backward calls until you reset them
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)

# Each backward adds into w.grad: 3 calls give 3x the gradient.
for step in range(3):
    (w * 3).sum().backward()

print(w.grad)

# Zero it in place (optimizer.zero_grad(set_to_none=False) does this)...
w.grad.zero_()

# ...or drop it (the default of zero_grad()).
w.grad = None
