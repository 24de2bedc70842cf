  import requests
  response = requests.post('http://localhost:11434/api/embeddings', json={
      'model': 'llama2:latest',
      'prompt': 'Here is an article about llamas...'*30
  })
