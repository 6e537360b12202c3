# deepcopy of a non-leaf tensor raises RuntimeError
# expect-error: RuntimeError
import copy

import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
print(y.is_leaf)
z = copy.deepcopy(y)
print("not reached")
