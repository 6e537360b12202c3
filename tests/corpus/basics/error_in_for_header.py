# iterating over a 0-d tensor fails in the for header
# expect-error: TypeError
import torch

v = torch.tensor([1.0, 2.0])
for item in v:
    print(item)
s = torch.tensor(3.0)
for item in s:
    print("not reached", item)
