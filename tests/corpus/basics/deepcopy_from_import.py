# from copy import deepcopy: containers of tensors are copied deeply
from copy import deepcopy

import torch

w = torch.ones(2, 2, requires_grad=True)
state = {"w": w, "b": torch.zeros(2)}
snapshot = deepcopy(state)
with torch.no_grad():
    w.mul_(5)
print(state["w"])
print(snapshot["w"])
items = [w, w]
dup = deepcopy(items)
same = dup[0] is dup[1]
print(same)
