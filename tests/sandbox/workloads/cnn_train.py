import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(32, 10),
)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, 5)
data = torch.utils.data.TensorDataset(torch.randn(128, 3, 32, 32), torch.randint(0, 10, (128,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
for _epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
    sched.step()
net.eval()
with torch.no_grad():
    print("cnn", net(torch.randn(4, 3, 32, 32)).argmax(1).tolist())
big = torch.randn(1024, 1024)
print("matmul", float((big @ big).sum()))
torch.set_num_threads(2)
print(torch.get_num_threads(), torch.get_num_interop_threads())
fut = torch.jit.fork(torch.mm, big, big)
print(float(torch.jit.wait(fut).mean()))
