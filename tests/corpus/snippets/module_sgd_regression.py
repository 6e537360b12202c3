# Linear regression with an nn.Module subclass and SGD: does the loss go down?
import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss()
x = torch.tensor([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]])
y = torch.tensor([[3.0], [3.0], [1.0]])
for epoch in range(3):
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    print(epoch, round(loss.item(), 4))
print(model)
