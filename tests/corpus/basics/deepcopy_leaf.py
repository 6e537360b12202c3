# copy.deepcopy of a leaf: a new leaf with new memory, .grad copied too
import copy

import torch

a = torch.tensor([1.0, 2.0], requires_grad=True)
(a * 3).sum().backward()
b = copy.deepcopy(a)
print(b.is_leaf, b.requires_grad, b.grad)
b_new = b.data_ptr() != a.data_ptr()
b.grad.zero_()
print(a.grad, b.grad)
c = copy.copy(a)
