# Target network via copy.deepcopy: its parameters don't follow the online network
import copy

import torch
import torch.nn as nn

torch.manual_seed(0)
online = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
target = copy.deepcopy(online)
target.requires_grad_(False)
opt = torch.optim.SGD(online.parameters(), lr=0.5)
x = torch.tensor([[1.0, -1.0]])
loss = (online(x) - target(x).detach() - 1).pow(2).sum()
loss.backward()
opt.step()
print(torch.equal(online[0].weight, target[0].weight))
with torch.no_grad():
    for p_t, p_o in zip(target.parameters(), online.parameters()):
        p_t.mul_(0.9).add_(0.1 * p_o)
print(target[0].bias)
