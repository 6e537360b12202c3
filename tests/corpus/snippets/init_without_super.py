# Forgot super().__init__(): assigning a submodule fails inside __init__
# expect-error: AttributeError
import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x)


x = torch.ones(1, 2)
model = Net()
print(model(x))
