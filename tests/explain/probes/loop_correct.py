# a correct training loop: zero_grad every turn
torch.manual_seed(0)
x = torch.randn(8, 3)
y = torch.randn(8, 1)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    opt.zero_grad()
    pred = model(x)
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    opt.step()
# nowhere: not reset
# nowhere: never reset
# nowhere: still holds the old
# nowhere: still held the old
