# Custom module with nn.Parameter: updating through .data versus under torch.no_grad()
import torch
import torch.nn as nn


class Scale(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.s = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * self.s

    def penalty(self):
        return (self.s ** 2).sum()


m = Scale(3)
x = torch.tensor([1.0, 2.0, 3.0])
loss = m(x).sum() + 0.5 * m.penalty()
loss.backward()
print(m.s.grad)
m.s.data -= 0.1 * m.s.grad
with torch.no_grad():
    m.s -= 0.1 * m.s.grad
m.zero_grad()
print(m.s, m.s.grad, list(m.named_parameters())[0][0])
