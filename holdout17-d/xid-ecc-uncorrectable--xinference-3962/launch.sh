xinference -H -p 9997
