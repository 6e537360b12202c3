# The encoder gets no gradient: a helper method detaches its output
import torch
import torch.nn as nn

torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self, hidden=3):
        super().__init__()
        self.encoder = nn.Linear(2, hidden)
        self.head = nn.Linear(hidden, 1)

    def features(self, x):
        return torch.relu(self.encoder(x)).detach()

    def forward(self, x):
        return self.head(self.features(x))


model = Model()
out = model(torch.randn(5, 2))
out.mean().backward()
print(model.encoder.weight.grad, model.head.weight.grad is not None)
print([n for n, p in model.named_parameters() if p.grad is None])
