import copy
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(512, 64)
y = torch.randint(0, 10, (512,))
for _step in range(30):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("mlp", float(loss))
best = copy.deepcopy(model)
print(best[0].weight.shape, np.asarray(best[0].weight.detach()).sum())
warnings.warn("a warning from the script", stacklevel=1)
try:
    torch.ones(2) @ torch.ones(3)
except RuntimeError as exc:
    print("caught", exc)
