# using a name after del is a NameError
# expect-error: NameError
import torch

a = torch.ones(2)
b = a
del a
print(b)
c = a + 1  # noqa: F821
