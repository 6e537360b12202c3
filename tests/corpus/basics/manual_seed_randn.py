# torch.manual_seed(0) makes random numbers reproducible
import torch

torch.manual_seed(0)
a = torch.randn(3, 4)
b = torch.rand(2)
c = torch.randint(0, 10, (5,))
p = torch.randperm(6)
torch.manual_seed(0)
d = torch.randn(3, 4)
same = torch.equal(a, d)
e = torch.empty(4).normal_()
drop = torch.dropout(torch.ones(8), 0.5, True)
print(same, a[0])
