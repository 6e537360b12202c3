# Tied weights: one Parameter used by two layers gets the sum of both gradients
import torch
import torch.nn as nn

torch.manual_seed(0)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3, bias=False)
        self.b = nn.Linear(3, 3, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


model = Tied()
out = model(torch.ones(1, 3)).sum()
out.backward()
print(model.a.weight is model.b.weight, len(list(model.parameters())))
print(model.a.weight.grad)
