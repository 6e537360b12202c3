# copy.deepcopy: fine for a leaf, an error for a non-leaf
import copy
import torch

a = torch.tensor([1.0, 2.0], requires_grad=True)

# A leaf deep-copies into a new, independent leaf (new storage, no path back to a).
a2 = copy.deepcopy(a)

# b is the result of an operation (a non-leaf)...
b = a * 2

# ...and torch refuses to deepcopy it.
b2 = copy.deepcopy(b)  # expect: RuntimeError
