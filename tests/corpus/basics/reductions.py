# reductions: sum, mean, max with dim, argmax, std, cumsum, prod
import torch

m = torch.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], requires_grad=True)
s = m.sum()
s0 = m.sum(dim=0)
mean1 = m.mean(1, keepdim=True)
mx = m.max(dim=1)
best, where = mx
am = m.argmax()
sd = m.std()
cs = m.cumsum(1)
pr = m.prod()
nm = m.norm()
total = s + sd + pr + nm + best.sum()
total.backward()
print(total.item(), m.grad)
