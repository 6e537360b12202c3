# BatchNorm buffers update in train() but not in eval(); Dropout is the identity in eval
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Dropout(0.5))
x = torch.randn(4, 2)
out_train = net(x)
print(net[1].running_mean, net[1].num_batches_tracked)
net.eval()
out_eval = net(x)
out_eval2 = net(x)
print(torch.equal(out_eval, out_eval2), net.training, net[2].training)
net.train()
print(net[1].training)
