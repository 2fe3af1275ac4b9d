module example.com/widget

go 1.26
