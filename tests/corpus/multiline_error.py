# a statement spanning several lines fails: the error line is where it starts
# expect-error: RuntimeError
import torch

a = torch.ones(2, 2)
z = torch.cat(
    [a,
     torch.ones(3, 3)],
    dim=0,
)
