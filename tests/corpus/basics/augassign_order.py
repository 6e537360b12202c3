# ts[-1] += ts.pop(): Python reads the target item before evaluating the right side
import torch

ts = [torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([3.0])]
ts[-1] += ts.pop()
print(ts)
