# version counters: views and detach share one; .data gets its own
import torch

x = torch.zeros(4)
v = x[1:3]
dt = x.detach()
dd = x.data
x.add_(1)
v.mul_(2)
dt.sub_(1)
dd.fill_(7)
x[0] = 3.0
print(x._version, v._version, dt._version, dd._version)
