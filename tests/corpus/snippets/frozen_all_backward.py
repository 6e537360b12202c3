# Every parameter frozen: the optimizer refuses an empty list and backward fails
# expect-error: RuntimeError
import torch
from torch import nn, optim

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 2), nn.Sigmoid(), nn.Linear(2, 1))
for p in model.parameters():
    p.requires_grad_(False)
trainable = [p for p in model.parameters() if p.requires_grad]
try:
    opt = optim.Adam(trainable, lr=0.01)
except ValueError as e:
    print("Adam:", str(e))
x = torch.randn(4, 2)
loss = model(x).pow(2).mean()
print(loss.requires_grad, loss.grad_fn)
loss.backward()
