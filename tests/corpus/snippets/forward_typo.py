# Misspelled forward: calling the module raises NotImplementedError
# expect-error: NotImplementedError
import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def foward(self, x):
        return self.fc(x)


model = Net()
x = torch.randn(3, 2)
print(model.foward(x).shape)
y = model(x)
