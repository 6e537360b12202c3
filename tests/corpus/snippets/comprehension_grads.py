# Which parameters got gradients? Comprehensions over named_parameters()
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
model[0].requires_grad_(False)
x = torch.randn(2, 3)
loss = model(x).sum()
loss.backward()
has_grad = {name: p.grad is not None for name, p in model.named_parameters()}
print(has_grad)
grads = [p.grad for p in model.parameters() if p.grad is not None]
norms = {n: round(p.grad.norm().item(), 4) for n, p in model.named_parameters() if p.requires_grad}
print(norms)
print(len(grads), all([p.requires_grad for p in model[2].parameters()]))
print(any([p.requires_grad for p in model[0].parameters()]))
