# a statement spanning several lines fails on a later line: the error line is where it starts
# expect-error: RuntimeError
import torch

a = torch.ones(4)
z = torch.stack(
    [
        a,
        torch.ones(2, 2).view(3),
    ],
)
