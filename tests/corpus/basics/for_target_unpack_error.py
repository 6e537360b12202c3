# a for loop whose target can't unpack the item fails at the for line
# expect-error: ValueError
import torch

pairs = [(torch.ones(1), torch.zeros(1)), (torch.ones(2),)]
for a, b in pairs:
    s = a + b
