# An in-place change that breaks backward (version counter)
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# sigmoid saves its output for backward.
y = x.sigmoid()

# Changing y in place bumps its version from 0 to 1.
y.mul_(2)

# Backward finds the saved tensor at version 1, expected 0, and refuses.
y.sum().backward()  # expect: RuntimeError
