# nn.ReLU(inplace=True) after sigmoid breaks backward: sigmoid saved its output
# expect-error: RuntimeError
import torch
import torch.nn as nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = torch.sigmoid(self.lin(x))
        return self.act(h)


block = Block()
out = block(torch.randn(2, 3))
print(out.grad_fn)
out.sum().backward()
