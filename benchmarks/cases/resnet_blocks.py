# A ResNet-like model from nn.Sequential blocks (65 parameter tensors), trained for 3 iterations
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def block(c):
    return nn.Sequential(
        nn.Conv2d(c, c, 3, padding=1, bias=False),
        nn.BatchNorm2d(c),
        nn.ReLU(),
        nn.Conv2d(c, c, 3, padding=1, bias=False),
        nn.BatchNorm2d(c),
    )


model = nn.ModuleDict(
    {
        "stem": nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU()),
        "blocks": nn.ModuleList(block(16) for _ in range(10)),
        "head": nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)),
    }
)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(8, 3, 16, 16)
y = torch.randint(0, 10, (8,))
for _ in range(3):
    h = model["stem"](x)
    for b in model["blocks"]:
        h = F.relu(h + b(h))
    loss = F.cross_entropy(model["head"](h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{len(list(model.parameters()))} parameter tensors, loss {loss.item():.4f}")
