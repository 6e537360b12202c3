# a tensor with several values in an if test is ambiguous: the header fails
# expect-error: RuntimeError
import torch

t = torch.tensor([1.0, 2.0])
ok = torch.tensor([3.0])
if ok:
    print("one value is fine")
if t > 0:
    print("not reached")
